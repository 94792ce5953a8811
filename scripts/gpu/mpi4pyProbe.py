import sys
print("python=" + sys.executable)
try:
    import mpi4py
except Exception as e:
    print("mpi4py=none"); print("error=" + type(e).__name__ + ": " + str(e)); sys.exit(0)
print("mpi4py=" + str(getattr(mpi4py, "__version__", "?")))
rc = getattr(mpi4py, "rc", None)
print("rc.threads=" + str(getattr(rc, "threads", "")))
print("rc.thread_level=" + str(getattr(rc, "thread_level", "")))
try:
    print("config=" + repr(mpi4py.get_config()).replace("\n", " "))
except Exception as e:
    print("config=")
try:
    import importlib.util
    s = importlib.util.find_spec("mpi4py.MPI")
    print("mpi_module=" + ((s and s.origin) or ""))
except Exception as e:
    print("mpi_module=")
try:
    rc.initialize = False; rc.finalize = False
    from mpi4py import MPI
    print("library_version=" + MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0])
except Exception as e:
    print("library_version="); print("error=" + type(e).__name__ + ": " + str(e))
