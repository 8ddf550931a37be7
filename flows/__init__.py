"""Prefect flows. Importing one imports Prefect: first make it offline, homed under SKILLMILL_HOME and
free of telemetry files (``pipeline.execution.prefect_env``)."""

from pipeline.execution import prefect_env

prefect_env.prepare()
