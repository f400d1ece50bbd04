# Writes the .java files SWIG generated in DIR into OUT, one quoted path a line (a javac @file).
# Always rewritten, so that javac re-runs whenever SWIG did.
# DeconvNativeConstants.java is no longer generated (deconv_java.swg wraps no constant: SWIG 4.1
# makes that interface public); a copy left by an older build tree would put it back in the jar.
file(REMOVE "${DIR}/DeconvNativeConstants.java")
file(GLOB sources "${DIR}/*.java")
list(SORT sources)
set(content "")
foreach(source IN LISTS sources)
  string(APPEND content "\"${source}\"\n")
endforeach()
file(WRITE "${OUT}" "${content}")
