# Sanitizer flags for DECONV_SANITIZE (placeholder)
