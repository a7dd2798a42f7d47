"""The old import path of tarn/ops/system_tables.py: `tarn.system_tables` is that very module (the Spark
connector and tests import it here)."""

import sys

from tarn.ops import system_tables

sys.modules[__name__] = system_tables
