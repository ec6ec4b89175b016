-- Argo CD health check for PtahMigration (resource_customizations layout:
-- operator.ptah.run/PtahMigration/health.lua). It decides on condition type,
-- status and reason, never on messages, and only on conditions written for
-- the object's current generation.
local hs = {}
-- Deletion waits for the operator: a running Apply finishes first.
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "being deleted"
  return hs
end
local generation = obj.metadata.generation or 0
if obj.status == nil or obj.status.conditions == nil or (obj.status.observedGeneration or 0) < generation then
  hs.status = "Progressing"
  hs.message = "waiting for the operator to read generation " .. tostring(generation)
  return hs
end
local conditions = {}
for _, c in ipairs(obj.status.conditions) do
  if (c.observedGeneration or 0) >= generation then
    conditions[c.type] = c
  end
end
local function is(typ, status, reason)
  local c = conditions[typ]
  return c ~= nil and c.status == status and (reason == nil or c.reason == reason)
end
local function say(status, typ)
  hs.status = status
  if conditions[typ] ~= nil then
    hs.message = conditions[typ].reason .. ": " .. (conditions[typ].message or "")
  end
  return hs
end
if is("Suspended", "True") then
  return say("Suspended", "Suspended")
end
-- A plan waiting for a person's approval is paused, not broken.
if is("Stalled", "True", "AwaitingApproval") then
  return say("Suspended", "ApprovalRequired")
end
-- An Apply that ended without establishing what it committed, once no
-- reading of the history is running: a person acknowledges it.
if is("Stalled", "True", "RunOutcomeUnknown") then
  return say("Degraded", "UnresolvedRun")
end
if is("Stalled", "True") then
  return say("Degraded", "Stalled")
end
if is("InSync", "True", "ScopedConverged") then
  return say("Healthy", "InSync")
end
if is("Reconciling", "True") then
  return say("Progressing", "Reconciling")
end
-- Settled but not in sync: pending versions under apply: Never, or a
-- history that refuses the artifact.
if is("InSync", "False") then
  return say("Degraded", "InSync")
end
hs.status = "Progressing"
hs.message = "phase " .. tostring(obj.status.phase)
return hs
