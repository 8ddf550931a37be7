"""Running the nightly flow safely: one run at a time, recovery after a crash, where tasks execute.

* ``lock``: one run per ``SKILLMILL_HOME`` (an ``flock`` the OS releases when the process dies);
* ``recovery``: what a killed run can leave behind (temporary files, staging folders), removed
  by the next run before it starts;
* ``runners``: tasks on a bounded thread pool or a Dask cluster (prefect-dask), in parcels;
* ``server``: the temporary Prefect server of a ``skillmill run``, which dies with the run.
"""
