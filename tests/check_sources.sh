#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The source checks of tests/check_sources.py (SPDX lines, lab notes, issue references in any
# file of the checkout, comments naming missing files): bash tests/check_sources.sh [PATH...], or
# --fix-spdx PATH... (see that script).
exec /usr/bin/python3 "$(dirname "$0")/check_sources.py" "$@"
