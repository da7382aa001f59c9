setenv SGE_ROOT /var/lib/gridengine
setenv SGE_CELL default
setenv SGE_ARCH lx-amd64
