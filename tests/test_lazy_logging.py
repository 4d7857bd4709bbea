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
        "log.propagate = False\n"
        "import logging\n"
        "real = logging.getLogger('mcpsync.server.x')\n"
        "print(real.level, real.propagate, log.propagate, log.isEnabledFor(30), log.name)\n")
    assert out.strip() == "40 False False False mcpsync.server.x"


def test_a_deferred_configuration_runs_before_the_first_record_it_wants() -> None:
    # The command line's way: config warnings shown, and logging loaded only if there is one.
    out = _run(
        "import mcpsync\n"
        "from mcpsync import _log\n"
        "def configure():\n"
        "    import logging\n"
        "    handler = logging.StreamHandler(sys.stdout)\n"
        "    handler.setFormatter(logging.Formatter('%(name)s %(levelname)s %(funcName)s %(message)s'))\n"
        "    logging.getLogger('mcpsync.config').addHandler(handler)\n"
        "_log.configure_when_needed(('mcpsync.config',), _log.WARNING, configure)\n"
        "_log.getLogger('mcpsync.config').info('below the level')\n"
        "_log.getLogger('mcpsync.client').warning('another logger')\n"
        "print('logging' in sys.modules)\n"
        "def caller():\n"
        "    _log.getLogger('mcpsync.config.sub').warning('wanted %d', 1)\n"
        "caller()\n")
    assert out.splitlines() == ["False", "mcpsync.config.sub WARNING caller wanted 1"]


def test_a_deferred_configuration_runs_once_logging_is_used_by_anyone_and_can_be_withdrawn() -> None:
    out = _run(
        "import mcpsync\n"
        "from mcpsync import _log\n"
        "ran = []\n"
        "withdraw = _log.configure_when_needed(('mcpsync.cache',), _log.WARNING, lambda: ran.append('first'))\n"
        "_log.configure_when_needed(('mcpsync.cache',), _log.WARNING, lambda: ran.append('second'))()\n"
        "import logging\n"          # another library loads logging: the next mcpsync record binds
        "_log.getLogger('mcpsync.client').debug('any record')\n"
        "withdraw()\n"              # too late: it ran; a no-op
        "_log.configure_when_needed(('x',), _log.WARNING, lambda: ran.append('now'))\n"  # loaded: at once
        "print(ran)\n")
    assert out.strip() == "['first', 'now']"
