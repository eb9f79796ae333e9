// Evaluates AWS requests against IAM policies with @cloud-copilot/iam-simulate, a maintained
// implementation of AWS's policy evaluation logic (identity and resource policies, service
// principals, condition operators, KMS key-policy trust). Called by tests/infra/policy/simulate.py.
//
// stdin:  {"cases": [{"name", "principal", "action", "resource", "accountId", "context",
//                      "identityPolicies": [policy...], "resourcePolicy": policy | null}]}
// stdout: [{"name", "result"}], result being Allowed, ImplicitlyDenied, ExplicitlyDenied, or
//         "Error: ..." when the simulator refuses the request (an unknown action, a malformed
//         policy, an ARN that does not fit the action).
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const { cases } = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const results = []
for (const c of cases) {
  const simulation = {
    identityPolicies: (c.identityPolicies ?? []).map((policy, i) => ({ name: `identity-${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: c.resourcePolicy ?? undefined,
    request: {
      principal: c.principal,
      action: c.action,
      resource: { resource: c.resource, accountId: c.accountId },
      contextVariables: c.context ?? {}
    }
  }
  const response = await runSimulation(simulation, {})
  const result =
    response.resultType === 'error'
      ? `Error: ${JSON.stringify(response.errors)}`
      : response.overallResult
  results.push({ name: c.name, result })
}
process.stdout.write(JSON.stringify(results))
