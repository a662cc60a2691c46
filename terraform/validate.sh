#!/usr/bin/env bash
# The terraform-validate step of CI (.ci/run calls it from the repo root):
#   1. terraform fmt -check -recursive terraform (and test/terraform's .tftest.hcl; no provider needed)
#   2. modules/tables: init + validate + test            (always; the module is provider-free)
#   3. the root variables' validations: variables.tf alone with test/terraform/variables.tftest.hcl
#   4. the root module: init -backend=false + validate   (only where the google provider can be
#      installed; without registry access it prints why it is skipped and succeeds)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
export TF_IN_AUTOMATION=1

terraform fmt -check -recursive -diff "$here"
terraform fmt -check -recursive -diff "$here/../test/terraform"
echo "terraform fmt: clean"

TF_DATA_DIR="$data/tables" terraform -chdir="$here/modules/tables" init -backend=false -input=false >/dev/null
TF_DATA_DIR="$data/tables" terraform -chdir="$here/modules/tables" validate
TF_DATA_DIR="$data/tables" terraform -chdir="$here/modules/tables" test

# Variables need no provider, so variables.tf on its own is a module terraform can test offline.
mkdir -p "$data/vars/tests"
cp "$here/variables.tf" "$data/vars/"
cp "$here/../test/terraform/variables.tftest.hcl" "$data/vars/tests/"
TF_DATA_DIR="$data/vars/.terraform" terraform -chdir="$data/vars" init -backend=false -input=false >/dev/null
TF_DATA_DIR="$data/vars/.terraform" terraform -chdir="$data/vars" test

# Only a failure to reach the registry is a reason to skip; any other init error (a syntax error, a
# bad version constraint) fails the step.
if ! out=$(TF_DATA_DIR="$data/root" terraform -chdir="$here" init -backend=false -input=false -no-color 2>&1); then
  if grep -qiE "could not connect|failed to query available provider packages|no such host|dial tcp|connection refused|i/o timeout|network is unreachable" <<<"$out"; then
    echo "terraform validate skipped: the google provider cannot be installed here (no registry access)"
    exit 0
  fi
  echo "$out" >&2
  exit 1
fi
TF_DATA_DIR="$data/root" terraform -chdir="$here" validate
