"""The CDK app: settings, stacks and constructs. Only ``cdk.app`` reads context or environment."""
