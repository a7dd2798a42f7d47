"""Data files of one table: their column layout, reading them by field id, writing them, and
merging sorted runs of them. Used by both the write path (tarn.write) and the read path
(tarn.scan), which never import each other."""
