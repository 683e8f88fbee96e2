"""``python -m onnxtext``: same as the ``onnxtext`` command."""

import sys

from .cli import main

sys.exit(main())
