//! Accounting: SGE 8.1.9 accounting records, the accounting file, and `qacct`.
