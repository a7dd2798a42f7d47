"""`python -m tarn.cli`: the `tarn` command."""

from tarn.cli import main

main()
