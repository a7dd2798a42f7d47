"""The old import path of tarn/ops/update.py: `tarn.update` is that very module (the Spark
connector and tests import it here)."""

import sys

from tarn.ops import update

sys.modules[__name__] = update
