"""`tarn lsm`: the LSM tree of each bucket, read from the planned splits' file metadata, drawn in
the terminal (rich) and as a standalone SVG.

Every file is placed on the bucket's key space by its min and max primary key: one row per
level 1 and above (the files of a level are one sorted run, their ranges do not overlap), one
row per level-0 file (each is its own sorted run). Single numeric keys are placed on a linear
scale; other keys by their rank among the bucket's file boundaries.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from rich.console import Group
from rich.panel import Panel
from rich.table import Table as RichTable
from rich.text import Text

from tarn.codec.binary_row import deserialize_row
from tarn.errors import CorruptFile
from tarn.lsm.policy import num_levels

LEVEL_COLOURS = ["#e4572e", "#f3a712", "#a8c256", "#29a19c", "#3b7dd8", "#6a4c93", "#c04cc0", "#7f7f7f"]
TERMINAL_STYLES = [("red", "bright_red"), ("yellow", "bright_yellow"), ("green", "bright_green"),
                   ("cyan", "bright_cyan"), ("blue", "bright_blue"), ("magenta", "bright_magenta")]


@dataclass
class FileBox:
    """One data file as the drawing needs it."""

    name: str
    level: int
    rows: int
    size: int
    min_key: tuple | None  # None: the file has no key (append tables)
    max_key: tuple | None
    min_sequence: int
    max_sequence: int
    delete_rows: int | None
    deletion_vector: bool
    span: tuple[float, float] = (0.0, 1.0)  # position on the bucket's key space, 0..1

    def to_json(self) -> dict:
        return {"file": self.name, "level": self.level, "rows": self.rows, "size": self.size,
                "min_key": None if self.min_key is None else [json_value(v) for v in self.min_key],
                "max_key": None if self.max_key is None else [json_value(v) for v in self.max_key],
                "min_sequence_number": self.min_sequence, "max_sequence_number": self.max_sequence,
                "delete_row_count": self.delete_rows, "deletion_vector": self.deletion_vector}


@dataclass
class BucketTree:
    partition: dict
    bucket: int
    levels: int  # the table's num-levels (L0 .. levels-1), or more when files sit higher
    files: list[FileBox] = field(default_factory=list)

    @property
    def label(self) -> str:
        where = ", ".join(f"{k}={text(v)}" for k, v in self.partition.items())
        return (f"partition {where} · " if where else "") + f"bucket {self.bucket}"

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def sorted_runs(self) -> int:
        return sum(1 for f in self.files if f.level == 0) + len({f.level for f in self.files if f.level > 0})

    def level_files(self, level: int) -> list[FileBox]:
        chosen = [f for f in self.files if f.level == level]
        if level == 0:  # newest first, as the merge reads them
            return sorted(chosen, key=lambda f: (-f.max_sequence, f.name))
        return sorted(chosen, key=lambda f: (f.min_key or (), f.name))

    def rows_of_drawing(self) -> list[tuple[int, list[FileBox]]]:
        """(level, files) per drawn row: each level-0 file alone, then one row per level."""
        out = [(0, [f]) for f in self.level_files(0)] or [(0, [])]
        out += [(level, self.level_files(level)) for level in range(1, self.levels)]
        return out

    def to_json(self) -> dict:
        return {"partition": {k: json_value(v) for k, v in self.partition.items()}, "bucket": self.bucket,
                "files": len(self.files), "size": self.size, "rows": self.rows,
                "sorted_runs": self.sorted_runs,
                "levels": [{"level": level, "files": [f.to_json() for f in self.level_files(level)]}
                           for level in range(self.levels)]}


# ---------------------------------------------------------------------------------------------
# reading


def collect(table, splits, partition_filter=None, bucket: int | None = None) -> list[BucketTree]:
    """The bucket trees of planned splits (append tables give one split per file: grouped)."""
    schema = table.schema()
    levels = num_levels(schema.shape.options) if schema.primary_keys else 1
    trees: dict[tuple[bytes, int], BucketTree] = {}
    for split in splits:
        if bucket is not None and split.bucket != bucket:
            continue
        partition = dict(zip(schema.partition_keys, split.partition_values))
        if partition_filter is not None and not partition_filter(partition):
            continue
        tree = trees.get((split.partition, split.bucket))
        if tree is None:
            tree = trees[(split.partition, split.bucket)] = BucketTree(partition, split.bucket, levels)
        for meta in split.files:
            low, high = decode_keys(table, meta)
            tree.files.append(FileBox(meta.file_name, meta.level, meta.row_count, meta.file_size, low, high,
                                      meta.min_sequence_number, meta.max_sequence_number, meta.delete_row_count,
                                      meta.file_name in split.deletion_files))
    out = [trees[k] for k in sorted(trees)]
    for tree in out:
        tree.levels = max([tree.levels] + [f.level + 1 for f in tree.files])
        place(tree)
    return out


def decode_keys(table, meta) -> tuple[tuple | None, tuple | None]:
    """A file's min and max key as tuples of Python values, with the types of the schema the
    file was written with (its trimmed primary key)."""
    file_schema = table.schema_by_id(meta.schema_id)
    keys = file_schema.trimmed_primary_keys
    if not keys or len(meta.min_key) < 4 or int.from_bytes(meta.min_key[:4], "big") == 0:
        return None, None
    types = [file_schema.field(k).type for k in keys]
    try:
        return tuple(deserialize_row(meta.min_key, types)), tuple(deserialize_row(meta.max_key, types))
    except CorruptFile:
        return None, None


def _sort_key(key: tuple) -> tuple:
    return tuple((v is not None, v) for v in key)


def place(tree: BucketTree) -> None:
    """Set each file's span on the bucket's key space."""
    keyed = [f for f in tree.files if f.min_key is not None]
    if not keyed:
        return
    numeric = all(len(f.min_key) == 1 and _is_number(f.min_key[0]) and _is_number(f.max_key[0]) for f in keyed)
    if numeric:
        low = min(float(f.min_key[0]) for f in keyed)
        high = max(float(f.max_key[0]) for f in keyed)
        width = high - low
        for f in keyed:
            f.span = ((float(f.min_key[0]) - low) / width, (float(f.max_key[0]) - low) / width) if width else (0.0, 1.0)
        return
    try:
        bounds = sorted({_sort_key(k) for f in keyed for k in (f.min_key, f.max_key)})
    except TypeError:  # keys that do not compare (should not happen within one bucket)
        return
    rank = {b: i for i, b in enumerate(bounds)}
    top = max(len(bounds) - 1, 1)
    for f in keyed:
        f.span = (rank[_sort_key(f.min_key)] / top, rank[_sort_key(f.max_key)] / top) if len(bounds) > 1 else (0, 1)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool) and \
        math.isfinite(float(value))


# ---------------------------------------------------------------------------------------------
# text forms


def text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)


def json_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return text(value)


def key_text(key: tuple | None) -> str:
    if key is None:
        return "-"
    return text(key[0]) if len(key) == 1 else "(" + ", ".join(text(v) for v in key) + ")"


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


# ---------------------------------------------------------------------------------------------
# terminal


def bar(files: list[FileBox], width: int, level: int) -> Text:
    """A row of the key space `width` characters wide with each file's span filled."""
    cells: list[tuple[str, str]] = [("·", "dim")] * width
    styles = TERMINAL_STYLES[level % len(TERMINAL_STYLES)]
    for i, f in enumerate(files):
        start = min(int(f.span[0] * width), width - 1)
        end = max(start + 1, min(width, math.ceil(f.span[1] * width)))
        for c in range(start, end):
            cells[c] = ("█", styles[i % 2])
    out = Text()
    start = 0
    for i in range(1, width + 1):  # one span per run of equal cells
        if i == width or cells[i] != cells[start]:
            out.append(cells[start][0] * (i - start), style=cells[start][1])
            start = i
    return out


def summary(tree: BucketTree) -> str:
    return f"{len(tree.files)} files · {tree.sorted_runs} sorted runs · {human_size(tree.size)} · {tree.rows:,} rows"


def render_tree(tree: BucketTree, width: int = 40, list_files: bool = False) -> Panel:
    grid = RichTable(box=None, pad_edge=False, show_header=True, header_style="bold")
    grid.add_column("level")
    grid.add_column("key space", no_wrap=True)
    grid.add_column("files", justify="right")
    grid.add_column("size", justify="right")
    grid.add_column("rows", justify="right")
    grid.add_column("keys")
    for level, files in tree.rows_of_drawing():
        if not files:
            grid.add_row(Text(f"L{level}", style="dim"), bar([], width, level), "0", "-", "-", "")
            continue
        low = min((f.min_key for f in files if f.min_key is not None), key=_sort_key, default=None)
        high = max((f.max_key for f in files if f.max_key is not None), key=_sort_key, default=None)
        keys = "" if low is None else f"{key_text(low)} .. {key_text(high)}"
        grid.add_row(f"L{level}", bar(files, width, level), str(len(files)), human_size(sum(f.size for f in files)),
                     f"{sum(f.rows for f in files):,}", keys)
    parts = [grid]
    if list_files:
        listing = RichTable(box=None, pad_edge=False, header_style="bold")
        for name, justify in (("level", "left"), ("file", "left"), ("rows", "right"), ("size", "right"),
                              ("min key", "left"), ("max key", "left"), ("seq", "left")):
            listing.add_column(name, justify=justify)
        for level in range(tree.levels):
            for f in tree.level_files(level):
                listing.add_row(f"L{level}", f.name + (" (dv)" if f.deletion_vector else ""), f"{f.rows:,}",
                                human_size(f.size), key_text(f.min_key), key_text(f.max_key),
                                f"{f.min_sequence}..{f.max_sequence}")
        parts += [Text(""), listing]
    return Panel(Group(*parts), title=tree.label, title_align="left", subtitle=summary(tree), subtitle_align="left",
                 expand=False)


# ---------------------------------------------------------------------------------------------
# SVG

SVG_WIDTH = 960
LABEL_WIDTH = 48
SUMMARY_WIDTH = 190
ROW_HEIGHT = 22
ROW_GAP = 4
PANEL_GAP = 28
TITLE_HEIGHT = 22


def svg(trees: list[BucketTree], title: str) -> str:
    """A standalone SVG drawing of the bucket trees (plain SVG 1.1, no scripts, no fonts)."""
    lane = SVG_WIDTH - LABEL_WIDTH - SUMMARY_WIDTH - 20
    body: list[str] = []
    y = 40
    for tree in trees:
        rows = tree.rows_of_drawing()
        subtitle = summary(tree)
        body.append(f'<text x="10" y="{y + 14}" class="bucket">{escape(tree.label)}</text>')
        body.append(f'<text x="{SVG_WIDTH - 10}" y="{y + 14}" class="note" text-anchor="end">'
                    f'{escape(subtitle)}</text>')
        y += TITLE_HEIGHT
        for level, files in rows:
            colour = LEVEL_COLOURS[min(level, len(LEVEL_COLOURS) - 1)]
            body.append(f'<text x="10" y="{y + 15}" class="level">L{level}</text>')
            body.append(f'<rect x="{LABEL_WIDTH}" y="{y}" width="{lane}" height="{ROW_HEIGHT}" class="lane"/>')
            for i, f in enumerate(files):
                w = max(3.0, (f.span[1] - f.span[0]) * lane)
                x = min(LABEL_WIDTH + f.span[0] * lane, LABEL_WIDTH + lane - w)
                tip = (f"{f.name}\nlevel {f.level} · {f.rows:,} rows · {human_size(f.size)}\n"
                       f"keys {key_text(f.min_key)} .. {key_text(f.max_key)}\n"
                       f"sequence {f.min_sequence}..{f.max_sequence}"
                       + ("\ndeletion vector" if f.deletion_vector else ""))
                body.append(f'<g><title>{escape(tip)}</title>'
                            f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{ROW_HEIGHT - 4}" rx="3" '
                            f'fill="{colour}" fill-opacity="{0.95 if i % 2 == 0 else 0.7}" class="file"/>')
                label = human_size(f.size)
                if w > 7 * len(label) + 6:
                    body.append(f'<text x="{x + w / 2:.1f}" y="{y + 15}" class="inside" text-anchor="middle">'
                                f'{escape(label)}</text>')
                body.append("</g>")
            if files:
                note = (f"{len(files)} file{'s' if len(files) != 1 else ''} · "
                        f"{human_size(sum(f.size for f in files))} · {sum(f.rows for f in files):,} rows")
                body.append(f'<text x="{LABEL_WIDTH + lane + 10}" y="{y + 15}" class="note">{escape(note)}</text>')
            y += ROW_HEIGHT + ROW_GAP
        keyed = [f for f in tree.files if f.min_key is not None]
        if keyed:
            low = min((f.min_key for f in keyed), key=_sort_key)
            high = max((f.max_key for f in keyed), key=_sort_key)
            body.append(f'<text x="{LABEL_WIDTH}" y="{y + 10}" class="axis">{escape(key_text(low))}</text>')
            body.append(f'<text x="{LABEL_WIDTH + lane}" y="{y + 10}" class="axis" text-anchor="end">'
                        f'{escape(key_text(high))}</text>')
            y += 14
        y += PANEL_GAP
    if not trees:
        body.append(f'<text x="10" y="{y + 14}" class="note">no data files</text>')
        y += 40
    style = ("text{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;fill:#222}"
             ".title{font-size:15px;font-weight:bold}.bucket{font-weight:bold}.note{fill:#555}"
             ".axis{font-size:10px;fill:#777}.level{font-weight:bold}.inside{font-size:10px;fill:#fff}"
             ".lane{fill:#f3f3f3}.file{stroke:#fff;stroke-width:1}")
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{y}" '
            f'viewBox="0 0 {SVG_WIDTH} {y}" role="img" aria-label={quoteattr(title)}>',
            f"<style>{style}</style>",
            f'<rect width="{SVG_WIDTH}" height="{y}" fill="#fff"/>',
            f'<text x="10" y="24" class="title">{escape(title)}</text>']
    return "\n".join(head + body + ["</svg>"]) + "\n"
