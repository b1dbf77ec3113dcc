"""``python -m lossgate``: the same command line as the ``lossgate`` console script."""

from lossgate.cli import main

if __name__ == "__main__":
    main()
