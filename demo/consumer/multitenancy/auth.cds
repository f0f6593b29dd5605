// Profile `multitenancy` only (cds.requires['demo-multitenancy'].model, see package.json):
// every tenant's data lives in its own database, reached through a user bound to the tenant,
// so anonymous requests are asked to log in (mocked users: alice → acme, bob → globex, ops =
// the provider, who subscribes tenants and fans runs out over all of them).
using { DemoService } from '../srv/demo-service';

annotate DemoService with @(requires: 'authenticated-user');
annotate DataPipelineManagementService with @(requires: 'authenticated-user');
