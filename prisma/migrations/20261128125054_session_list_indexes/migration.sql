-- CreateIndex
CREATE INDEX "Session_workspaceId_id_idx" ON "Session"("workspaceId", "id" DESC);

-- CreateIndex
CREATE INDEX "Session_workspaceId_kind_id_idx" ON "Session"("workspaceId", "kind", "id" DESC);

-- CreateIndex
CREATE INDEX "Session_workspaceId_parentId_id_idx" ON "Session"("workspaceId", "parentId", "id" DESC);
