import math

import torch
import torch.nn.functional as F
from torch import nn



def attention_scores(Q,K):
    return Q@K.transpose(1,2)



def scale_scores(scores,d_k):
    piece_8 = math.sqrt(float(d_k))
    return scores.div(piece_8)



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    return torch.tril(torch.ones(T_q,T_k,dtype=torch.bool,device=device))



def padding_mask(valid_lens,T_k):
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    yy_14 = torch.arange(T_k,device=valid_lens.device).expand(*valid_lens.shape,T_k)
    return yy_14 < valid_lens[...,None]



def masked_softmax(scores,mask=None):
    if mask is None:
        mask = torch.ones_like(scores,dtype=torch.bool)
    tmp_10 = torch.tensor(float('-inf'),dtype=scores.dtype,device=scores.device)
    scores = torch.where(mask,scores,tmp_10)
    res_5 = scores.max(dim=-1,keepdim=True).values
    res_5 = torch.nan_to_num(res_5,neginf=0.0).detach()
    mat_11 = torch.exp(scores - res_5)
    thing_7 = mat_11.sum(-1,keepdim=True)
    return mat_11 / thing_7.clamp(min=torch.finfo(mat_11.dtype).tiny)



def attention_output(weights,V):
    return torch.matmul(weights,V)



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    debug = False
    d_k = Q.size(-1)
    scores = scale_scores(attention_scores(Q,K),d_k)
    if is_causal:
        zz_6 = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = zz_6 if mask is None else mask & zz_6
    weights = masked_softmax(scores,mask)
    return attention_output(weights,V),weights



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        def make():
            return nn.Linear(d_model,d_model,bias)

        self.w_q = make()
        self.w_k = make()
        self.w_v = make()
        self.w_o = make()

    def forward(self,query,key,value,mask=None,is_causal=False):
        yy_0,part_4,arr_1 = query.shape
        acc_3 = key.shape[1]
        item2_2 = self.num_heads
        buf_13 = self.w_q(query).reshape(yy_0,part_4,item2_2,-1).permute(0,2,1,3)
        xx_9 = self.w_k(key).reshape(yy_0,acc_3,item2_2,-1).permute(0,2,1,3)
        arr_15 = self.w_v(value).reshape(yy_0,acc_3,item2_2,-1).permute(0,2,1,3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:,None]
        val_12,item2_16 = scaled_dot_product_attention(buf_13,xx_9,arr_15,mask=mask,is_causal=is_causal)
        val_12 = val_12.permute(0,2,1,3).contiguous().view(yy_0,part_4,arr_1)
        return self.w_o(val_12),item2_16



def dot_product_variance(d_k,num_samples=10000,generator=None):
    acc_17,part_18 = torch.randn(2,num_samples,d_k,generator=generator)
    return torch.var(torch.sum(acc_17 * part_18,dim=1)).item()
