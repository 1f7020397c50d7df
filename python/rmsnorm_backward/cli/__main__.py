# SPDX-License-Identifier: BSD-3-Clause
import sys

from . import main

sys.exit(main())
