module watchword.local/tools/vault

go 1.25

require github.com/hashicorp/vault v1.21.1

replace (
	github.com/99designs/keyring => github.com/Jeffail/keyring v1.2.3
	github.com/ma314smith/signedxml v1.1.1 => github.com/moov-io/signedxml v1.1.1
)
