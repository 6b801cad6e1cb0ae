"""``python -m bayes_risk``."""

import sys

from bayes_risk.cli import console_main

if __name__ == "__main__":
    sys.exit(console_main())
