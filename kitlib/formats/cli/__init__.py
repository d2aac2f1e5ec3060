"""The outputs of Kafka's command-line tools, as people save them during an incident: one module
a tool, each registering its format.

- :mod:`~kitlib.formats.cli.frame`: what they share: time lines that stamp the rows after them,
  comments, banners, a collector of rows and unparsed lines, and :class:`~kitlib.formats.cli.frame.ToolOutput`,
  the line loop a parser fills in with what is its own;
- :mod:`~kitlib.formats.cli.topics` (``kafka-topics --describe``),
  :mod:`~kitlib.formats.cli.consumer_groups` (``kafka-consumer-groups --describe``),
  :mod:`~kitlib.formats.cli.configs` (``kafka-configs --describe``),
  :mod:`~kitlib.formats.cli.log_dirs` (``kafka-log-dirs --describe``),
  :mod:`~kitlib.formats.cli.metadata_quorum` (``kafka-metadata-quorum describe``),
  :mod:`~kitlib.formats.cli.dump_log` (``kafka-dump-log``),
  :mod:`~kitlib.formats.cli.df` (``df`` of the log dirs' file systems) and
  :mod:`~kitlib.formats.cli.jmxtool` (JmxTool's CSV, ``kafka-jmx.sh``).
"""

from kitlib.formats.cli import configs, consumer_groups, df, dump_log, jmxtool, log_dirs, metadata_quorum, topics

__all__ = ["configs", "consumer_groups", "df", "dump_log", "jmxtool", "log_dirs", "metadata_quorum", "topics"]
