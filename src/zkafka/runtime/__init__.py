"""Process-wide runtime concerns every subsystem shares: the cyclic garbage collector's pauses
(`collector.paused`) while a subsystem makes objects it keeps, by the tens of thousands, the
freezing of what a big pause kept, and its periodic thaw (`collector.thaw`)."""
