terraform {
  # 1.9: error messages may interpolate locals; no provider, so init/validate/test run offline.
  required_version = ">= 1.9.0"
}
