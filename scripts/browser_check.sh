#!/usr/bin/env bash
# Renders a sample HTML report and checks it in headless Chromium (tests/browser.rs),
# failing when no browser is found. Screenshots land in $GRID_ARTIFACTS, else
# target/artifacts/: report_browser.png (top of the page) and
# report_browser_examples.png (the token salience view), plus report_browser.html.
#
#   scripts/browser_check.sh            # uses chromium on PATH or $GRID_CHROMIUM
#   apt-get install -y chromium         # Debian/Ubuntu, if none is installed
set -euo pipefail
cd "$(dirname "$0")/.."
CI="${CI:-true}" cargo test --locked --test tests browser -- --nocapture
ls -l "${GRID_ARTIFACTS:-target/artifacts}"/report_browser*
