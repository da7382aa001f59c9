#!/bin/sh
# Times qacct on a generated accounting file of N records (default 1,000,000): a summary, a
# grouped table and a -j search through the whole file. Prints figures; asserts nothing.
#   bench/qacct-million.sh [N]
set -eu
n=${1:-1000000}
cd "$(dirname "$0")/.."
cargo build --release --bin qacct >/dev/null 2>&1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v n="$n" 'BEGIN {
  printf "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n";
  for (j = 1; j <= n; j++)
    printf "all.q:node%d:g%d:user%d:job%d:%d:sge:0:1795301118:1795301119:%d:0:0:%d:0.004121:0.004266:4420.000000:0:0:0:0:441:0:0:0.000000:8:0:0:0:7:3:NONE:defaultdepartment:NONE:1:0:0.008387:0.000000:0.000000:NONE:0.000000:NONE:0.000000:0:0\n",
      j % 16, j % 5, j % 50, j, j, 1795301119 + j % 7, j % 7;
}' >"$dir/accounting"
echo "records: $n ($(du -h "$dir/accounting" | cut -f1))"
for args in "" "-o -g -h" "-j $((n + 1))"; do
  start=$(date +%s.%N)
  ./target/release/qacct -f "$dir/accounting" $args >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  echo "qacct $args: $(echo "$end - $start" | bc) s"
done
