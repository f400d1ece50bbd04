# Writes the .java files SWIG generated in DIR into OUT, one quoted path a line (a javac @file).
# Always rewritten, so that javac re-runs whenever SWIG did.
file(GLOB sources "${DIR}/*.java")
list(SORT sources)
set(content "")
foreach(source IN LISTS sources)
  string(APPEND content "\"${source}\"\n")
endforeach()
file(WRITE "${OUT}" "${content}")
