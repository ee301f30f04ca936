# The Watchword image: a static binary (CGO_ENABLED=0, built by
# `make image-binary`, which also checks that it is static) on distroless
# static, as the numeric non-root user 65532. docs/install.md says how to
# build it and what was verified.
#
#   docker build -t watchword:dev --build-arg VERSION=$(git describe --tags --always) .

ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so that a change to the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN make image-binary VERSION=${VERSION}

FROM ${BASE_IMAGE}
COPY --from=build /src/bin/linux/watchword /watchword
USER 65532:65532
ENTRYPOINT ["/watchword"]
CMD ["controller"]
