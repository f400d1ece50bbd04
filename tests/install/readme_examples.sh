#!/usr/bin/env bash
# The Java and C# programs in README.md are, line for line, the examples the install tests
# compile and run. Usage: readme_examples.sh SOURCE_DIR
set -euo pipefail
top=$1
block() { # the first fenced block of language $1 in README.md
    awk -v lang="$1" '$0 == "```" lang {on = 1; next} on && $0 == "```" {exit} on {print}' "$top/README.md"
}
status=0
for pair in "java:tests/java/example/Example.java" "csharp:tests/csharp/example/Example.cs"; do
    lang=${pair%%:*} file=${pair#*:}
    if ! diff -u <(block "$lang") "$top/$file"; then
        echo "README.md's $lang example differs from $file (above)" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "README examples are the tested ones"
exit $status
