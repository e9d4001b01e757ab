package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/duix-exporter/duix_exporter/client"
)

type conversationShowOptions struct {
	app, id, output string
}

// runConversationShow implements `conversation show`.
func runConversationShow(ctx context.Context, env *cli, o conversationShowOptions) int {
	if err := checkID("id", o.id); err != nil {
		return env.failf(exitUsage, "%v", err)
	}
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()
	conv, err := client.GetConversation[Conversation](ctx, c, o.id)
	if err != nil {
		if client.IsNotFound(err) {
			return env.failf(exitNotFound, "conversation %s of app %s: not found: %s", o.id, o.app, describeError(err))
		}
		return env.failf(exitFailed, "fetching conversation %s of app %s: %s", o.id, o.app, describeError(err))
	}
	if o.output == "json" {
		b, err := json.Marshal(conv) // one line, with the platform's JSON (see safeJSON)
		if err == nil {
			_, err = fmt.Fprintf(env.stdout, "%s\n", safeJSON(b))
		}
		if err != nil {
			return env.failf(exitFailed, "writing the output: %v", err)
		}
		return exitOK
	}
	writeConversation(env.stdout, o.app, conv)
	return exitOK
}

// textWriter prints sections of label/value lines.
type textWriter struct{ w io.Writer }

func (t textWriter) section(title string) { fmt.Fprintf(t.w, "\n%s\n", title) }

func (t textWriter) field(label string, value any) {
	s := fmt.Sprint(value)
	if s == "" {
		s = "-"
	}
	fmt.Fprintf(t.w, "  %-18s %s\n", label, printable(s, 2048))
}

func yesNo(flag int) string {
	if flag != 0 {
		return "yes"
	}
	return "no"
}

func orNone(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// writeConversation prints a conversation's configuration for people.
func writeConversation(w io.Writer, app string, c *Conversation) {
	t := textWriter{w}
	fmt.Fprintf(w, "Conversation %s of app %s\n", printable(c.ID, 128), app)
	t.field("name", c.ConversationName)
	t.field("maxConversation", c.MaxConversation)
	t.field("language", c.Language)
	t.field("corp ID", c.CorpID)
	t.field("user ID", c.UserID)
	t.field("ASR provider", orNone(c.AsrProvider))
	t.field("uses", fmt.Sprintf("data model %s, knowledge base %s, file %s, third party %s, freedom mode %s",
		yesNo(c.DataModelIsUsed), yesNo(c.KnowledgeIsUsed), yesNo(c.FileIsUsed), yesNo(c.ThirdIsUsed), yesNo(c.IsFreedom)))
	t.field("knowledge bases", len(c.KnowledgeDtoList))

	p := c.ConversationInfoDto
	t.section("Persona")
	t.field("name", p.Name)
	t.field("nickname", p.NickName)
	t.field("gender", name(int(p.Gender), "unknown", "", "male", "female"))
	t.field("age", p.Age)
	t.field("height", p.Height)
	t.field("weight", p.Weight)
	t.field("characters", p.Characters)
	t.field("back story", p.BackStory)

	d := c.DetailDto
	t.section("Avatar model")
	t.field("name", d.ModelName)
	t.field("model ID", d.ModelID)
	t.field("type", fmt.Sprintf("%s (modelIdType %d)", name(int(d.ModelIDType), "unknown", "cloud", "local"), int(d.ModelIDType)))
	t.field("proportion", d.Proportion)
	t.field("video size", fmt.Sprintf("%dx%d", d.VideoWidth, d.VideoHeight))
	t.field("human", fmt.Sprintf("%s, %dx%d at (%d, %d)", orDash(d.HumanProportion), d.HumanWidth, d.HumanHeight, d.HumanX, d.HumanY))
	t.field("terminal type", d.TerminalType)
	t.field("scene type", d.SceneType)
	t.field("sample picture", d.SamplePictureURL)

	b := d.BackgroundDto
	t.section("Background")
	t.field("name", b.BackgroundName)
	t.field("code", b.BackgroundCode)
	t.field("URL", b.BackgroundURL)
	t.field("proportion", b.Proportion)
	t.field("file type", b.FileType)
	t.field("background type", d.Background)

	t.section("TTS")
	t.field("name", d.TtsName)
	t.field("ID", d.TtsID)
	t.field("speaker", d.TtsSpeaker)
	t.field("speed", d.TtsSpeedRate)
	t.field("volume", d.TtsVolume)
	t.field("pitch", d.TtsPitch)
	t.field("source", d.TtsSource)
	t.field("URL", d.TtsURL)

	t.section(fmt.Sprintf("Large models (%d)", len(c.ModelDtoList)))
	for _, m := range c.ModelDtoList {
		fmt.Fprintf(w, "  %s\n", printable(orDash(m.LargeName), 256))
		t.field("  model ID", m.ModelID)
		t.field("  type / code", fmt.Sprintf("%d / %d", m.LargeModelType, m.ModelCode))
		t.field("  bot URL", m.BotURL)
		t.field("  prompt", m.Prompt)
	}

	t.section(fmt.Sprintf("Scripts (%d)", len(c.ScriptDtoList)))
	for _, g := range groupScripts(c.ScriptDtoList) {
		fmt.Fprintf(w, "  %s\n", g.name)
		for _, s := range g.scripts {
			extra := "emotion " + orDash(printable(s.Emotion, 32))
			if s.TtsContent != nil && *s.TtsContent != "" {
				extra += ", audio " + printable(*s.TtsContent, 512)
			}
			fmt.Fprintf(w, "    - %s  [%s]\n", printable(s.ScriptContent, 2048), extra)
		}
	}
}

// scriptTypeNames name the script types of docs/platform-api.md, in order.
var scriptTypeNames = []string{"wake-up word", "opening line", "waiting phrase", "unknown question",
	"farewell", "interruption", "interruption sentence", "guiding phrase"}

// name is names[v], or unknown when v has none.
func name(v int, unknown string, names ...string) string {
	if v < 0 || v >= len(names) || names[v] == "" {
		return unknown
	}
	return names[v]
}

type scriptGroup struct {
	name    string
	scripts []ScriptEntry
}

// groupScripts groups scripts by type: the named types in their order
// (docs/platform-api.md), then any other type by number.
func groupScripts(scripts []ScriptEntry) []scriptGroup {
	byType := map[ScriptType][]ScriptEntry{}
	for _, s := range scripts {
		byType[s.ScriptType] = append(byType[s.ScriptType], s)
	}
	var groups []scriptGroup
	for i, n := range scriptTypeNames {
		typ := ScriptType(i)
		if list := byType[typ]; len(list) > 0 {
			groups = append(groups, scriptGroup{name: n, scripts: list})
			delete(byType, typ)
		}
	}
	var others []ScriptType
	for typ := range byType {
		others = append(others, typ)
	}
	sort.Slice(others, func(i, j int) bool { return others[i] < others[j] })
	for _, typ := range others {
		groups = append(groups, scriptGroup{name: "script type " + strconv.Itoa(int(typ)), scripts: byType[typ]})
	}
	return groups
}
