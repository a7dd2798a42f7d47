"""The old import path of tarn/ops/append_compaction.py: `tarn.append_compaction` is that very module (the Spark
connector and tests import it here)."""

import sys

from tarn.ops import append_compaction

sys.modules[__name__] = append_compaction
