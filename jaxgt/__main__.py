import sys

from jaxgt.cli import main

sys.exit(main())
