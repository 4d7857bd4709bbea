"""Server configs: the ``mcpServers`` file formats, discovery, ``${VAR}`` expansion, validation.

::

    from mcpsync import config

    found = config.discover()                 # every known file, project first, then user
    for problem in found.problems:            # malformed files: reported and skipped
        print(problem)
    for name, server in found.servers.items():
        print(name, server.type, server.command or server.url)
    for name, error in found.errors.items():  # servers whose entry is invalid
        print(name, error)

Files are read fresh on every call (nothing is memoised), and a malformed file
never stops the others from being read. Nothing here starts a server; the
:class:`~mcpsync.Manager` does that. A project file (inside the directory
discovery looks at) is read untrusted until the user trusts it: its entries are
not expanded and get ``trusted=False`` (:func:`trust_project_file`,
:func:`revoke_trust`, :func:`trusted_projects`, :func:`trust_file`).

Thread safety: every function may be called from any thread; a :class:`Config`
is not modified after it is returned.

The parts: ``_model`` (the values: :class:`ServerConfig`, :class:`Config` and the
records of what was read), ``_parse`` (one entry or one dict: validation and
``${VAR}`` expansion), ``_files`` (the files: which ones discovery reads, and reading
one), ``_trust`` (the record of trusted project files, and the question on the
terminal), ``_jsonc`` (JSON with comments, as VS Code writes it).
"""

from ._files import PathLike as PathLike
from ._files import discover, discovery_sources, load
from ._model import HTTP as HTTP
from ._model import SSE as SSE
from ._model import STDIO as STDIO
from ._model import Config, ConfigProblem, ConfigSource, ServerConfig
from ._model import log as log
from ._files import TrustProject as TrustProject
from ._parse import expand, parse_server, valid_name
from ._parse import from_mapping as from_mapping
from ._files import trust_project_file as trust_project_file
from ._trust import revoke_trust, trust_file, trusted_projects

__all__ = [
    "Config",
    "ConfigProblem",
    "ConfigSource",
    "ServerConfig",
    "discover",
    "discovery_sources",
    "expand",
    "load",
    "parse_server",
    "revoke_trust",
    "trust_file",
    "trust_project_file",
    "trusted_projects",
    "valid_name",
]

# The values keep the public path they had before the split (in reprs, pickles and docs).
for _value in (Config, ConfigProblem, ConfigSource, ServerConfig):
    _value.__module__ = __name__
del _value
