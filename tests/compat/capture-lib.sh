# Sourced by the record-issue*.sh scripts: `cap`, which runs one command line on the oracle
# as a user and writes it in shared/oracle/sge-capture.sh's format to $OUT/NAME.txt (with
# $CONTEXT, through the scratch directory $TMP).
cap() {  # cap DIR/NAME USER 'command line'
    local name=$1 user=$2 cmd=$3 rc f="$OUT/$1.txt"
    mkdir -p "$(dirname "$f")"
    runuser -l "$user" -c "$cmd" >"$TMP/out" 2>"$TMP/err" </dev/null; rc=$?
    {
        printf '$ %s\n' "$cmd"
        printf '# user=%s context=%s\n' "$user" "$CONTEXT"
        echo "# ---- stdout ----"
        cat "$TMP/out"
        if [ -s "$TMP/out" ] && [ -n "$(tail -c1 "$TMP/out")" ]; then echo; echo "# (no newline at end of stdout)"; fi
        echo "# ---- stderr ----"
        cat "$TMP/err"
        if [ -s "$TMP/err" ] && [ -n "$(tail -c1 "$TMP/err")" ]; then echo; echo "# (no newline at end of stderr)"; fi
        echo "exit=$rc"
    } > "$f"
    echo "$name: exit=$rc"
}
