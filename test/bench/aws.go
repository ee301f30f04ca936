package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// storeAWS is the AWS Secrets Manager store of test/awsfake (-store aws):
// the awssm provider on the real SDK, batching 20 secrets a call, against
// the loopback fake that counts the calls it answers.
const storeAWS = "aws"

// awsKeysNamespace holds the Secret with the fake's access key.
const awsKeysNamespace = "default"

// startAWSFake starts the fake in this process (the controller reaches it
// over loopback) with the latency of -latency and -latency-max, writes the
// bench's keys to it and the access key to a Secret.
func (b *bench) startAWSFake(ctx context.Context) error {
	b.aws = awsfake.New("us-east-1")
	b.aws.SetLatency(b.c.Latency, max(b.c.LatencyMax, b.c.Latency))
	for i := range b.c.Keys {
		b.aws.PutSecretString(fmt.Sprintf("key-%d", i), fmt.Sprintf(`{"password":"value-%d"}`, i))
	}
	id, secret := b.aws.AddUser("bench")
	return b.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: awsKeysNamespace, Name: "bench-aws-keys"},
		Data: map[string][]byte{"id": []byte(id), "secret": []byte(secret)}})
}

func (b *bench) awsProvider() *v1alpha1.AWSProvider {
	return &v1alpha1.AWSProvider{Region: "us-east-1", Endpoint: b.aws.URL, STSEndpoint: b.aws.URL,
		Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID:     v1alpha1.SecretKeySelector{Namespace: awsKeysNamespace, Name: "bench-aws-keys", Key: "id"},
			SecretAccessKey: v1alpha1.SecretKeySelector{Namespace: awsKeysNamespace, Name: "bench-aws-keys", Key: "secret"},
		}}}
}

// awsCalls prints what the fake counted since the last call, as a check of
// the controller's own metrics, and resets the counts.
func (b *bench) awsCalls(phase string) {
	if b.aws == nil {
		return
	}
	largest := 0
	for _, n := range b.aws.BatchSizes("secretsmanager:BatchGetSecretValue") {
		largest = max(largest, n)
	}
	fmt.Fprintf(os.Stderr, "AWS calls counted by the fake, %s: %d BatchGetSecretValue (the largest of %d ids), %d GetSecretValue, %d DescribeSecret\n", phase,
		b.aws.Calls("secretsmanager:BatchGetSecretValue"), largest, b.aws.Calls("secretsmanager:GetSecretValue"), b.aws.Calls("secretsmanager:DescribeSecret"))
	b.aws.ResetCalls()
}
