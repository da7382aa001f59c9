//! gridspool: a Grid Engine-compatible batch scheduler without a qmaster.
