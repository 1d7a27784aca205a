"""Re-recording a reviewer can trust: what a live run changed (and whether to write at all), and
when a live run stops starting cases (-x / --maxfail, --eval-budget).

Live modes only: a replay never imports this package.
"""
