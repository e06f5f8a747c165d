"""Log lines an operator can act on: repeated warnings summarised instead of flooding the log.

A broker sees some bad input all the time (port scanners, misconfigured clients, a broken znode that
every event trips over). Logging each occurrence drowns the lines that matter, so such call sites go
through a `RateLimitedLog`: the first occurrence of a kind is logged in full, later ones within the
window are only counted, and the next line logged after the window ends carries the count ("... 5,123
more like this in the last 60 s"). Nothing here depends on any other zkafka package.
"""

from zkafka.logs.limiter import RateLimitedLog, RepeatFilter

__all__ = ["RateLimitedLog", "RepeatFilter"]
