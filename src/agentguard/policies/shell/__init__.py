"""Shell commands read the way bash and the OS read them (issue 25): grammar, resolution, paths, globs.

:func:`analyse` / :func:`analyse_argv` return an :class:`Analysis` (commands that run, paths named, what
could not be resolved); :func:`~.globs.intersects` decides whether a pattern could match a rule's glob.
"""

from .analysis import MAX_DEPTH, Analysis, Command, analyse, analyse_argv, program_name
from .globs import fnmatch_tokens, intersects, literal_tokens
from .paths import path_forms, pattern_paths, word_paths

__all__ = ["Analysis", "Command", "MAX_DEPTH", "analyse", "analyse_argv", "fnmatch_tokens", "intersects",
           "literal_tokens", "path_forms", "pattern_paths", "program_name",
           "word_paths"]
