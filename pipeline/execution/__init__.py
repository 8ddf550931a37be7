"""Running the nightly flow safely: one run at a time, recovery after a crash, where tasks execute.

* ``lock``: one run per ``SKILLMILL_HOME`` (an ``flock`` the OS releases when the process dies);
* ``recovery``: what a killed run can leave behind (temporary files, staging folders), removed
  by the next run before it starts;
* ``runners``: tasks on a bounded thread pool or a Dask cluster (prefect-dask), in parcels;
* ``server``: the Prefect server of a ``skillmill run``: the user's (``PREFECT_API_URL``), the
  shared local one (``shared_server``: reused by back-to-back runs, stops itself when idle), or a
  temporary one that dies with the run;
* ``preflight``: what a run checks before any server starts (folders it writes);
* ``prefect_env``: Prefect offline, homed under ``SKILLMILL_HOME``, with no telemetry files.
"""
