"""mcpsync's loggers load :mod:`logging` only once the application has, and behave as before.

Each case runs in a fresh interpreter: whether ``logging`` is loaded, and how it is configured,
is process state (pytest itself has loaded it here).
"""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_a_record_made_before_logging_is_loaded_loads_nothing_and_goes_nowhere() -> None:
    out = _run(
        "import mcpsync\n"
        "from mcpsync._log import getLogger\n"
        "log = getLogger('mcpsync.client')\n"
        "log.warning('dropped %s', 1); log.error('dropped'); log.debug('dropped')\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    log.exception('dropped')\n"
        "print('logging' in sys.modules, 'traceback' in sys.modules)\n")
    assert out.strip() == "False False"


def test_logging_configured_before_import_gets_records_naming_their_caller() -> None:
    out = _run(
        "import logging\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout,\n"
        "                    format='%(name)s %(levelname)s %(filename)s %(funcName)s %(message)s')\n"
        "import mcpsync\n"
        "from mcpsync._log import getLogger\n"
        "def caller():\n"
        "    log = getLogger('mcpsync.client')\n"
        "    log.debug('first %s', 1)\n"     # binds the real logger's methods
        "    log.info('second')\n"           # goes straight to them
        "caller()\n"
        "print(any(type(h) is logging.NullHandler for h in logging.getLogger('mcpsync').handlers))\n")
    assert out.splitlines() == ["mcpsync.client DEBUG <string> caller first 1",
                                "mcpsync.client INFO <string> caller second", "True"]


def test_logging_configured_after_import_gets_the_records_from_then_on() -> None:
    out = _run(
        "import mcpsync\n"
        "from mcpsync._log import getLogger\n"
        "log = getLogger('mcpsync.transport.stdio')\n"
        "log.warning('before logging was loaded')\n"
        "import logging\n"
        "handler = logging.StreamHandler(sys.stdout)\n"
        "handler.setFormatter(logging.Formatter('%(levelname)s %(funcName)s %(message)s'))\n"
        "logging.getLogger('mcpsync').addHandler(handler)\n"
        "def caller():\n"
        "    log.warning('after %s', 'configuring')\n"
        "caller()\n")
    assert out.splitlines() == ["WARNING caller after configuring"]


def test_unconfigured_logging_prints_no_mcpsync_warning_as_before() -> None:
    # The package's NullHandler keeps logging's last-resort handler from printing mcpsync's
    # warnings when the application configured nothing: it is added once logging is loaded.
    out = _run(
        "import mcpsync\n"
        "import logging\n"
        "from mcpsync._log import getLogger\n"
        "getLogger('mcpsync.client').warning('not printed')\n"
        "logging.getLogger('other').warning('printed')\n")
    assert out.splitlines() == ["printed"]


def test_the_logger_answers_for_the_real_one_and_is_one_per_name() -> None:
    out = _run(
        "import mcpsync\n"
        "from mcpsync._log import getLogger\n"
        "log = getLogger('mcpsync.server.x')\n"
        "assert log is getLogger('mcpsync.server.x')\n"
        "log.setLevel(40)\n"
        "import logging\n"
        "print(logging.getLogger('mcpsync.server.x').level, log.isEnabledFor(30), log.name)\n")
    assert out.strip() == "40 False mcpsync.server.x"
