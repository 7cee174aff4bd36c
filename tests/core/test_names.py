"""The session folder's file names and the environment variables, declared once (core/files/names)."""

from __future__ import annotations

from gpusession.core.files import names


def test_s7_session_status_and_journal_use_the_one_set_of_file_names() -> None:
    from gpusession.core.folder import journal, root, session
    from gpusession.core.retrieval import status

    assert session.SESSION_TOML is names.SESSION_TOML and session.DATA_FILES is names.DATA_FILES
    assert journal.JOURNAL is names.JOURNAL == "journal.jsonl" and journal.RUN_LOCK is names.RUN_LOCK
    assert status.RESULTS_CSV is names.RESULTS_CSV == "resultats-bruts.csv"
    assert status.SUMMARY_JSON is names.SUMMARY_JSON and root.ENV_HOME is names.ENV_HOME


def test_s7_environment_variable_names_agree_with_the_modules_that_set_them() -> None:
    from gpusession.bench.ranks import LEADER_ENV
    from gpusession.bench.stacks import STACK_DIR_ENV
    from gpusession.core.experiment.placeholders import ENV
    from gpusession.core.folder.processes import PARENT_ENV

    assert (PARENT_ENV, STACK_DIR_ENV, LEADER_ENV) == (
        names.ENV_PARENT_PID, names.ENV_STACK_DIR, names.ENV_LEADER_NODE)
    assert all(v.startswith(names.ENV_PLACEHOLDER_PREFIX) for v in ENV.values())
