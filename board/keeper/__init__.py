"""bin/keeper: the per-machine daemon that starts, stops, restarts and reports bot daemons."""
