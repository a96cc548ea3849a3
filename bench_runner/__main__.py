import sys

from otelbench.commands.bench import main

sys.exit(main())
