"""What the commands share: the exit statuses and the help of arguments several commands take."""

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2  # triage: nothing found, findings, could not run

TZ_HELP = "timezone the logs were written in (default: the bundle manifest's tz, else UTC)"

NO_CACHE_HELP = (
    "read a big raw bundle into memory instead of ingesting it into the kit's cache "
    "($XDG_CACHE_HOME/kitlib, else ~/.cache/kitlib) and reading that; bundles under "
    "KITLIB_CACHE_MIN_MB (default 128) MiB are always read into memory (`kitlib cache --help`)"
)
