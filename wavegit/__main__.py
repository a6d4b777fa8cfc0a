import sys

from wavegit.cli import main

sys.exit(main())
