-- lossgate schema 22 (PostgreSQL): a tenant's retention policy may give recall records,
-- guard results and responses a time to live (lossgate.retention). lossgate_app may delete
-- them; the tenant policy still bounds what it reaches.
GRANT DELETE ON recalls, guard_results, responses TO lossgate_app;
