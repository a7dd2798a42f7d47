"""The old import path of the maintenance operations, which live in tarn/ops/ now:
`tarn.maintenance.<name>` is the very module `tarn.ops.<name>` (`statistics` is
`tarn.ops.analyze`), so patching one patches the other. Kept for the tests and tools that
import it; new code imports tarn.ops.
"""

import sys

from tarn.ops import analyze, expire, orphans, references, rollback, tags, time_travel
from tarn.ops.post_commit import after_commit

statistics = analyze
for _name, _module in {"expire": expire, "orphans": orphans, "references": references, "rollback": rollback,
                       "tags": tags, "time_travel": time_travel, "statistics": analyze}.items():
    sys.modules[f"{__name__}.{_name}"] = _module

__all__ = ["after_commit", "expire", "orphans", "references", "rollback", "statistics", "tags", "time_travel"]
