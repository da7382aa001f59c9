SGE_ROOT=/var/lib/gridengine; export SGE_ROOT
SGE_CELL=default; export SGE_CELL
SGE_ARCH=lx-amd64; export SGE_ARCH
