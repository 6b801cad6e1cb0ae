"""``python -m bayes_risk``."""

import sys

from bayes_risk.cli import main

if __name__ == "__main__":
    sys.exit(main())
