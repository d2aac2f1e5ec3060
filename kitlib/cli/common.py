"""What the commands share: the exit statuses and the help of arguments several commands take."""

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2  # triage: nothing found, findings, could not run

TZ_HELP = "timezone the logs were written in (default: the bundle manifest's tz, else UTC)"
