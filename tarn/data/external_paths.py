"""`data-file.external-paths`: new data files written under other roots than the table's, as
Paimon 1.1+ does (AbstractFileStore.createExternalPaths and the ExternalPathProvider kinds).

The roots are the option's comma-separated URIs (each with a scheme); the strategy picks one
per file:

- `round-robin` (and `specific-fs`, over the roots of the scheme `data-file.external-paths.specific-fs`
  names): from a random root, the next one for every file;
- `weight-robin`: a root drawn at random by `data-file.external-paths.weights` (round-robin with
  fewer than two roots or no weights);
- `entropy-inject`: round-robin from the first root, with three directories of hash bits
  between the bucket directory and the file (`1001/1001/1001/10011001`: the low 20 bits of the
  file name's murmur3_32, split 4/4/4/8), which spreads object-store prefixes.

A file lands at `<root>/<partition>/bucket-<n>/[<hash dirs>/]<name>` and its manifest entry
records that whole URI as `_EXTERNAL_PATH` (readers of every engine follow it). tarn writes
external files through the table's own store, so the roots must be on it (a local table:
`file:` roots; an S3 table: `s3://` roots); others are refused before anything is written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tarn.codec.murmur import hash_bytes
from tarn.errors import InvalidOption, UnsupportedFeature
from tarn.options import Options

STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")
LOCAL_SCHEMES = ("file",)
S3_SCHEMES = ("s3", "s3a", "s3n")


def scheme_of(uri: str) -> str | None:
    head, sep, _ = uri.partition(":")
    return head.lower() if sep and head and head.isalnum() and len(head) > 1 else None


@dataclass(frozen=True)
class ExternalRoots:
    """The table's external roots and how a file's root is picked."""

    roots: tuple[str, ...]
    strategy: str
    weights: tuple[int, ...] | None = None

    @classmethod
    def of(cls, options: Options, identifier: str) -> "ExternalRoots | None":
        """None when the table writes into its own directory (option or strategy unset)."""
        text = options.get("data-file.external-paths")
        strategy = (options.get("data-file.external-paths.strategy") or "none").strip().lower()
        if not text or not text.strip() or strategy == "none":
            return None
        if strategy not in STRATEGIES:
            raise InvalidOption(f"table {identifier}: option 'data-file.external-paths.strategy' = '{strategy}' "
                                f"is not one of {list(STRATEGIES)}")
        specific = options.get("data-file.external-paths.specific-fs")
        roots = []
        for given in text.split(","):
            root = given.strip()
            scheme = scheme_of(root)
            if scheme is None:
                raise InvalidOption(f"table {identifier}: external path '{root}' of option "
                                    f"'data-file.external-paths' has no scheme (file:///..., s3://...)")
            if strategy == "specific-fs":
                if specific is None:
                    raise InvalidOption(f"table {identifier}: 'data-file.external-paths.strategy' = 'specific-fs' "
                                        f"needs 'data-file.external-paths.specific-fs'")
                if scheme != specific.strip().lower():
                    continue
            roots.append(root.rstrip("/"))
        if not roots:
            raise InvalidOption(f"table {identifier}: option 'data-file.external-paths' leaves no external path")
        weights = None
        if strategy == "weight-robin" and options.get("data-file.external-paths.weights"):
            try:
                weights = tuple(int(w) for w in options.get("data-file.external-paths.weights").split(","))
            except ValueError:
                raise InvalidOption(f"table {identifier}: option 'data-file.external-paths.weights' must be "
                                    f"comma-separated positive integers") from None
            if len(weights) != len(roots) or min(weights) <= 0:
                raise InvalidOption(f"table {identifier}: option 'data-file.external-paths.weights' needs one "
                                    f"positive weight per external path ({len(roots)})")
        return cls(tuple(roots), strategy, weights)

    def check_store(self, identifier: str, is_local: bool, is_s3: bool) -> None:
        """tarn writes external files with the table's own file system."""
        wanted = LOCAL_SCHEMES if is_local else S3_SCHEMES if is_s3 else ()
        foreign = [r for r in self.roots if scheme_of(r) not in wanted]
        if foreign:
            raise UnsupportedFeature(f"table {identifier}: external path '{foreign[0]}' is not on the table's own "
                                     f"store; tarn writes external data files only to roots on it "
                                     f"({' or '.join(s + ':' for s in wanted) or 'none'})")

    def picker(self, relative_bucket: str) -> "RootPicker":
        return RootPicker(self, relative_bucket.strip("/"))


@dataclass
class RootPicker:
    """The external location of each new file of one bucket (one per bucket writer)."""

    roots: ExternalRoots
    relative_bucket: str
    position: int = field(default=-1)

    def __post_init__(self):
        n = len(self.roots.roots)
        if self.roots.strategy == "entropy-inject":
            self.position = 0
        else:  # Java starts round-robin at a random root
            self.position = random.randrange(n)

    def location(self, file_name: str) -> str:
        """The URI of a new file named `file_name`."""
        roots = self.roots.roots
        if self.roots.strategy == "weight-robin" and self.roots.weights is not None and len(roots) >= 2:
            root = random.choices(roots, weights=self.roots.weights)[0]
            return f"{root}/{self.relative_bucket}/{file_name}"
        self.position = (self.position + 1) % len(roots)
        root = roots[self.position]
        if self.roots.strategy == "entropy-inject":
            return f"{root}/{self.relative_bucket}/{entropy_dirs(file_name)}/{file_name}"
        return f"{root}/{self.relative_bucket}/{file_name}"


def entropy_dirs(file_name: str) -> str:
    """Java's EntropyInjectExternalPathProvider.computeHash: the low 20 bits of murmur3_32 of
    the name, as binary, in directories of 4, 4, 4 and 8 digits."""
    bits = format((hash_bytes(file_name.encode(), 0) & 0xFFFFFFFF) | 0x80000000, "b")[-20:]
    return "/".join((bits[0:4], bits[4:8], bits[8:12], bits[12:]))
