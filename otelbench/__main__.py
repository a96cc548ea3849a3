import sys

from otelbench.cli import main

sys.exit(main())
